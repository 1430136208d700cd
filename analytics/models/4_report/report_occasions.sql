-- report_occasions: per storage class and workload (headline metric), the spread split into
-- between-occasion (time of day/week) and within-occasion (repetition) parts, in the metric's
-- unit and as CV. "mostly occasions" when the occasion share is at least one half and the
-- F test rejects "no occasion effect" at occasion_alpha.
with headline as (
    select distinct campaign, storage_class, profile, workload, direction, metric, workload_title, unit
    from occasion_measurements
    where is_headline
)
select
    o.campaign, o.storage_class, o.profile, o.workload, h.workload_title, o.direction, o.metric, h.unit,
    o.n_occasions, o.n, o.mean, o.sd_between, o.sd_within, o.cv_between, o.cv_within,
    o.share_between, 1 - o.share_between as share_within,
    o.f_stat, o.df_between, o.df_within, o.p_value,
    case
        when o.p_value is null then 'not testable'
        when o.p_value >= s.occasion_alpha then 'no clear occasion effect'
        when o.share_between >= 0.5 then 'mostly occasions'
        else 'some occasion effect'
    end as finding
from occasion_components o
join headline h using (campaign, storage_class, profile, workload, direction, metric)
cross join settings s
order by o.campaign, o.profile, o.workload, o.direction, o.storage_class
