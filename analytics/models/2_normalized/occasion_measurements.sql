-- occasion_measurements: one row per occasion (run × occasion) of every storage class, workload,
-- direction and metric, holding that occasion's values and their summary — a run's second compact
-- table (compact/…/run=<r>/occasion_measurements.parquet), made once when the run is compacted.
--
-- Why: adding one run to a campaign of 100,000 results must not redo the campaign's work per
-- value. The campaign reads these rows (about one per five values) and merges them: n, mean and
-- ss (the sum of squared deviations from the occasion's mean) merge exactly across occasions
-- (Chan et al.: ss = Σ ss_i + Σ n_i (mean_i − mean)²), and observations keep every value, so medians,
-- quartiles and per-value tests stay exact (measurements unnests them).
-- observations are in the order the repetitions ran (rep, then cell order): [1] is the first rep.
-- excluded_by (the guards that leave a result out, sorted; [] for most) is a grouping column: an
-- occasion with a flagged repetition has a row of its clean values and one of its flagged ones.
-- Which flags are left out is chosen when the campaign is aggregated (`--keep-flagged`), not here:
-- the campaign reads these rows through a view that drops the excluded rows and merges an
-- occasion's kept ones again (pvbench.analytics.inputs.count_occasions), without compacting again.
-- observation_values, sole_role, named_roles and nodes are read from observations, kept beside
-- them for the campaign's readers that need nothing else (the quartiles, the comparisons, the
-- history): Parquet then decodes a list of doubles or a few strings, not every value's struct.
select
    *,
    -- the values in the observations' order
    list_transform(observations, o -> o.value) as observation_values
from (select
    campaign, run, occasion, storage_class, profile, workload, direction, metric, excluded_by,
    any_value(workload_title) as workload_title,
    -- what storage_class is made of (result_rows): the class's name and volume shape
    any_value(class_name) as class_name, any_value(volume_mode) as volume_mode, any_value(access_mode) as access_mode,
    any_value(rw) as rw, any_value(bs) as bs, any_value(bs_bytes) as bs_bytes, any_value(iodepth) as iodepth,
    any_value(numjobs) as numjobs, any_value(rwmixread) as rwmixread, any_value(fsync) as fsync,
    any_value(wl_group) as wl_group, any_value("load") as "load",
    any_value(unit) as unit, any_value(better) as better, bool_or(is_headline) as is_headline,
    count(*) as n,
    avg(value) as mean,
    coalesce(var_pop(value) * count(*), 0) as ss,
    min(value) as min,
    max(value) as max,
    min(started_at) as started_at,
    -- each value with what differs between its results, sorted by rep, cell_order, value (the
    -- struct's first fields, so list_sort compares them first: 2.5x cheaper than an ordered list()
    -- aggregate, ~1 s of CPU at 100,000 results)
    list_sort(list(struct_pack(rep, cell_order, value, role, started_at, node, source)), 'ASC', 'NULLS LAST')
        as observations,
    -- the role every value has (null: they differ, or have none): one entry of the comparisons
    case when min(role) = max(role) and count(role) = count(*) then min(role) end as sole_role,
    -- the roles and nodes the values name (the history's), distinct and sorted
    coalesce(list_sort(list_distinct(list(role) filter (where role <> ''))), []) as named_roles,
    coalesce(list_sort(list_distinct(list(node))), []) as nodes
from result_values
group by all)
