-- report_methodology: the methodology page, filled from the data (Papadopoulos et al. 2021:
-- setup description, units, design, confidence, cost). Rows of (section, item, value), in order.
with rr as (
    -- each run's setup (run_setup, made when the run was compacted), not every result's row: the
    -- facts below are distinct sets, the counts sums of its n_rows (results of a direction) and
    -- n_ordered (those with their cell order recorded).
    select * from run_setup
),
cells as (
    select campaign, storage_class, profile, workload, direction, sum(n_rows) as n,
           count(distinct occasion) as occasions, count(distinct run) as runs
    from rr group by all
),
reps as (
    select campaign, run, occasion, storage_class, profile, workload, direction, sum(n_rows) as reps
    from rr group by all
),
rows as (
    -- setup
    select campaign, 1 as section_order, 'setup' as section, 10 as item_order,
           'storage class: ' || storage_class as item,
           'provisioner ' || coalesce(string_agg(distinct provisioner, ', ' order by provisioner), 'not recorded')
             || '; filesystem ' || coalesce(string_agg(distinct filesystem, ', ' order by filesystem), 'not recorded')
             || '; nodes ' || coalesce(string_agg(distinct node, ', ' order by node), 'not recorded')
             -- what the volume mode measures (docs/volumes.md): the class's shape is part of its row
             || '; volume ' || coalesce(any_value(volume_mode), 'Filesystem') || ', ' || coalesce(any_value(access_mode), 'ReadWriteOnce')
             || case coalesce(any_value(volume_mode), 'Filesystem')
                    when 'Block' then ' (fio on the raw device: no filesystem, no page cache in the path)'
                    else ' (fio on files in the volume''s filesystem)' end as value
    from rr group by campaign, storage_class
    union all
    select campaign, 1, 'setup', 20, 'source of results',
           string_agg(distinct source, ', ' order by source) from rr group by campaign
    union all
    select campaign, 1, 'setup', 21, 'platform (imported)', string_agg(distinct platform, ', ' order by platform)
    from rr where platform is not null group by campaign
    union all
    select campaign, 1, 'setup', 30, 'versions',
           'pvbench ' || coalesce(string_agg(distinct pvbench_version, ', ' order by pvbench_version), '?')
             || '; fio ' || coalesce(string_agg(distinct fio_version, ', ' order by fio_version), 'not recorded')
             || '; kernel ' || coalesce(string_agg(distinct kernel, ', ' order by kernel), 'not recorded')
             || '; Kubernetes ' || coalesce(string_agg(distinct kubernetes_version, ', ' order by kubernetes_version), 'not recorded')
    from rr group by campaign
    -- design
    union all
    select campaign, 2, 'design', 10, 'matrix',
           printf('%d storage classes × %d workloads (%s) × %d occasions × %s repetitions',
                  count(distinct storage_class), count(distinct profile || '/' || workload),
                  string_agg(distinct profile, ', ' order by profile), count(distinct run || '/' || occasion),
                  (select case when min(reps) = max(reps) then min(reps)::varchar
                               else min(reps) || '–' || max(reps) end from reps r where r.campaign = rr.campaign))
    from rr group by campaign
    union all
    select campaign, 2, 'design', 20, 'values per cell (n)',
           case when min(n) = max(n) then min(n)::varchar else min(n) || '–' || max(n) end
             || ' (each storage class × workload × direction, pooled over runs and occasions)'
    from cells group by campaign
    union all
    select campaign, 2, 'design', 30, 'occasions',
           -- one row per occasion already: list them in the order they ran
           string_agg(occasion || coalesce(' (' || strftime(started, '%a %Y-%m-%d %H:%M UTC') || ')', ''), '; '
                      order by started nulls last, occasion)
    from (select campaign, occasion, min(first_started_at) as started from rr group by all)
    group by campaign
    union all
    select campaign, 2, 'design', 40, 'cell order',
           case when sum(n_ordered) = 0 then 'not recorded (imported results)'
                else 'randomized interleaving of all storage classes within each repetition round (order recorded in every result)'
           end
             || coalesce('; seed ' || (select string_agg(distinct seed, ', ' order by seed) from rr d where d.campaign = rr.campaign and seed is not null), '')
    from rr group by campaign
    union all
    select campaign, 2, 'design', 50, 'timing',
           coalesce(string_agg(distinct printf('ramp %gs + %gs measured, file %d MiB', ramp_s, runtime_s, size_bytes // 1048576), '; ' order by printf('ramp %gs + %gs measured, file %d MiB', ramp_s, runtime_s, size_bytes // 1048576)),
                    'not recorded')
    -- the distinct settings first: a printf per setting, not per result
    from (select distinct campaign, ramp_s, runtime_s, size_bytes from rr) group by campaign
    -- units
    union all
    -- the metrics measured, in the catalog's order, as the metric catalog describes them
    select m.campaign, 3, 'units', c.position, c.metric,
           c.unit || ', ' || c.better || ' is better (' || c.description || ')'
    from (select distinct campaign, metric from occasion_measurements) m
    join metric_catalog c using (metric)
    -- confidence and tests
    union all
    select c.campaign, 4, 'confidence', k, item, value
    from (select distinct campaign from rr) c,
    (values
        (10, 'summaries', 'mean ± sd; 95% confidence interval of the mean from the occasion means (run × occasion), mean ± t(0.975, k−1)·sd/√k over k ≥ 2 occasions; on a single occasion from its repetitions, marked as not covering day-to-day variation; box plots of min, Q1, median, Q3, max'),
        (20, 'comparisons', printf('t test on the log of the occasion means (Welch when both sides ran on ≥ 2 occasions; otherwise day-to-day variation from the other side and the class''s other occasions, or the verdict is withheld); ratio with its %.0f%% CI from the same estimate; Holm-corrected across the metrics of a comparison at α = %g; smallest meaningful change %.0f%%',
                                   100 * (select compare_confidence from settings),
                                   (select compare_alpha from settings),
                                   100 * (select compare_min_change from settings))),
        (30, 'occasions', printf('one-way random-effects ANOVA over run × occasion; F test at α = %g',
                                 (select occasion_alpha from settings))),
        (40, 'outliers', printf('value against the mean of the other reps of its occasion, in units of the pooled within-occasion sd without it (studentized t, n − g − 1 df); flagged above the Bonferroni cut-off t(1 − α/2m) for the m values of the cell, α = %g per cell, and ≥ %.0f%% off; occasions of ≥ 3 reps, cells of n ≥ %d',
                                (select outlier_alpha from settings),
                                100 * (select outlier_min_rel_dev from settings),
                                (select outlier_min_n from settings)::integer)),
        (50, 'warm-up', printf('rank of the first repetition within its occasion, summed over occasions: exact one-sided p ≤ %g and a median slowdown ≥ %.0f%%; cannot fire unless the product of the occasions'' rep counts is ≥ 1/p (e.g. 3 occasions of 3 reps, 2 of 5)',
                               (select warmup_alpha from settings),
                               100 * (select warmup_min_slowdown from settings)))
    ) as t(k, item, value)
    -- declared limits
    union all
    select c.campaign, 5, 'limits', 10, l.pattern || ' · ' || l.direction || ' ' || l.metric,
           l.declared || printf(' (= %,.1f %s; flagged above +%.0f%%)', l.limit_value,
                                (select unit from metric_catalog m where m.metric = l.metric), 100 * l.tolerance)
             || coalesce('; ' || l.note, '')
    from (select distinct campaign from rr) c, storage_class_limits l
    -- cost
    union all
    select campaign, 6, 'cost', 10, 'resources',
           printf('runs %d, results %d; fio time %s, fio CPU %s (usr+sys)', count(*), sum(n_results),
                  coalesce(printf('%,.0f s', sum(fio_seconds)), 'not recorded'),
                  coalesce(printf('%,.1f s', sum(cpu_seconds)), 'not recorded'))
    from report_cost group by campaign
    union all
    select campaign, 6, 'cost', 20, 'cost model',
           case when bool_or(has_cost_model) and sum(total_cost) is null
                then 'prices declared, but the results carry no timings (imported): no cost computed'
                when bool_or(has_cost_model)
                then printf('%s %,.2f in total (%s %,.2f per run on average): wall hours × cluster price + fio hours × storage class price',
                            any_value(currency), sum(total_cost), any_value(currency), avg(total_cost))
                else 'no prices declared (add cluster_price_per_hour / price_per_hour to the limits file)'
           end
    from report_cost group by campaign
)
select campaign, section, item, value, section_order, item_order
from rows
where value is not null
order by campaign, section_order, item_order, item
