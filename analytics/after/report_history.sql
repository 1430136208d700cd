-- report_history: one row per occasion of every history series, for the charts: the point (its
-- mean and interval, run, trigger, the change it followed), the level it is on (segment: 1, 2, …
-- between the change points; level: the segment's geometric mean) and the series' verdict
-- repeated (history_series, one row per series, judged in Python by pvbench.stats.history).
-- Made after the Python tables, as report_history_banner.sql.
with marked as (
    select
        p.*,
        s.* exclude (series_id, change_indexes, change_labels),
        list_contains(s.change_indexes, p.occasion_index) as is_change_point,
        s.change_labels[list_position(s.change_indexes, p.occasion_index)] as change_label,
        1 + len(list_filter(s.change_indexes, i -> i <= p.occasion_index)) as segment,
        -- a run's first occasion in the series: where its event (if any) is drawn
        p.occasion_index = 1
            or p.campaign is distinct from lag(p.campaign) over w
            or p.run is distinct from lag(p.run) over w as first_of_run
    from history_points p
    join history_series s using (series_id)
    window w as (partition by p.series_id order by p.occasion_index)
)
select
    storage_class, node_selection, profile, workload, direction, metric, workload_title, unit, better,
    occasion_index::INTEGER as occasion_index,
    campaign, run, occasion, occasion_started_at, n, mean, ci95_low, ci95_high, role, trigger,
    case when first_of_run then event end as event,
    case when first_of_run and event is not null then occasion_index - 0.5 end::DOUBLE as event_at_occasion_index,
    segment::INTEGER as segment,
    -- null where a mean of the segment is ≤ 0 (changes are ratios: such a series is not judged)
    case when bool_and(coalesce(mean > 0, false)) over level
        then exp(avg(ln(greatest(mean, 1e-300))) over level) end as level,
    is_change_point,
    change_label,
    n_occasions, judged, judged_note, n_change_points, current_level, previous_level, current_change_pct,
    drifting, drift_pct_per_occasion, drift_pct_ci95_low, drift_pct_ci95_high, drift_p_value, noise_pct,
    series_summary
from marked
window level as (partition by series_id, segment)
order by storage_class, node_selection, profile, workload, direction, metric, occasion_index
