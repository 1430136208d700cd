-- warmup_by_occasion: per occasion (run × occasion) and cell, the first repetition against the others.
-- slowdown > 0 means the first rep was slower than the median of the rest (direction-aware:
-- fewer IOPS or MiB/s, more latency), as a share of that median. Headline metrics, occasions of
-- at least 3 reps (a first rep needs at least two others to be compared with).
-- first_slow_rank is the first rep's rank among the n reps of its occasion, 1 = slowest. When the
-- reps of an occasion are exchangeable (no warm-up) it is uniform on 1..n whatever the occasion's
-- level, so report_anomalies can sum it over occasions and get an exact p-value that no occasion
-- effect can fool. Ties count against a warm-up (the first rep takes the highest rank of its tie
-- group): rounded values (imports, rate-limited fio) then make the test conservative, never eager.
-- Per run: made when the run is compacted (one of the compact's tables), from that run's occasions'
-- observations; adding a run to the campaign does not rank every older occasion again.
with headline_values as (
    select
        campaign, run, occasion, storage_class, profile, workload, workload_title, direction, metric,
        unit, better, o.rep, o.value, o.started_at
    from (select * exclude (observations), unnest(observations) as o from occasion_measurements
          -- not the volume lifecycle: its rows are every test's cells, whose reps do not follow one another
          where is_headline and workload <> getvariable('lifecycle_workload'))
),
ranked as (
    select *,
        rep = min(rep) over occ as is_first,
        arg_min(value, rep) over occ as first_value_of_occasion
    from headline_values
    window occ as (partition by campaign, run, occasion, storage_class, profile, workload, direction, metric)
),
per_occasion as (
    select
        campaign, run, occasion, storage_class, profile, workload,
        any_value(workload_title) as workload_title, direction, metric,
        any_value(unit) as unit, any_value(better) as better,
        count(*) as n,
        min(rep) as first_rep,
        min(started_at) as occasion_started_at,
        any_value(value) filter (where is_first) as first_value,
        median(value) filter (where not is_first) as rest_median,
        min(value) filter (where not is_first) as rest_min,
        max(value) filter (where not is_first) as rest_max,
        -- others that are slower than the first rep or tied with it
        count(*) filter (where not is_first and case when better = 'higher' then value <= first_value_of_occasion
                                                     else value >= first_value_of_occasion end) as n_not_faster
    from ranked
    group by all
    having count(*) >= 3
)
select
    * exclude (n_not_faster),
    case when better = 'higher' then 1 - first_value / nullif(rest_median, 0)
         else first_value / nullif(rest_median, 0) - 1 end as slowdown,
    case when better = 'higher' then first_value < rest_min else first_value > rest_max end as first_is_slowest,
    (1 + n_not_faster)::integer as first_slow_rank
from per_occasion
