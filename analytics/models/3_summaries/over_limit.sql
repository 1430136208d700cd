-- over_limit: every result checked against the limits declared for its storage class
-- (storage_class_limits, from the user's limits file; empty table → no rows).
-- A limit on the 'total' applies to read + write of one result (a cloud disk's IOPS cap is
-- shared), 'read'/'write' to that direction. The most specific matching pattern wins
-- (an exact class name beats a glob like '*').
with limited as (
    -- the classes some declared pattern matches: only their results are checked (none declared, as
    -- in most campaigns, and nothing is read but the class column)
    select distinct r.storage_class
    from (select distinct storage_class from result_rows) r
    join storage_class_limits lim on r.storage_class like lim.like_pattern escape '\'
),
checked as (
    select * from result_rows where storage_class in (select storage_class from limited)
),
per_result as (
    select campaign, run, occasion, storage_class, profile, workload, any_value(workload_title) as workload_title,
           rep, source_key, 'total' as direction, sum(iops) as iops, sum(bw_mib_s) as bw_mib_s
    from checked
    group by campaign, run, occasion, storage_class, profile, workload, rep, source_key
    union all
    select campaign, run, occasion, storage_class, profile, workload, workload_title,
           rep, source_key, direction, iops, bw_mib_s
    from checked
),
long as (
    unpivot per_result on iops, bw_mib_s into name metric value value
),
matched as (
    select
        l.*, lim.pattern, lim.limit_value, lim.declared, lim.tolerance, lim.note,
        row_number() over (partition by l.source_key, l.direction, l.metric order by lim.specificity desc) as pick
    from long l
    join storage_class_limits lim
      on lim.metric = l.metric and lim.direction = l.direction
     and l.storage_class like lim.like_pattern escape '\'
    where l.value is not null
)
select
    campaign, run, occasion, storage_class, profile, workload, workload_title, rep, source_key,
    direction, metric, (select unit from metric_catalog c where c.metric = m.metric) as unit,
    value, pattern as limit_pattern, limit_value, declared as limit_declared, tolerance, note as limit_note,
    value / nullif(limit_value, 0) as ratio_to_limit,
    value > limit_value * (1 + tolerance) as over_limit
from matched m
where pick = 1
