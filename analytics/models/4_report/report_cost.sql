-- report_cost: what each run cost, in resources and (with a cost model) in money.
-- Resources are measured: fio seconds (started → ended of every result), CPU seconds of fio
-- (usr + sys), the run's wall-clock span. Money is a model from declared values (limits file):
--   cost = wall hours × cluster_price_per_hour + Σ_class (that class's fio hours × its price_per_hour)
-- Imported results carry no timings: their rows show counts only (costs null).
-- The resources of each run and class are run_usage (made when the run was compacted); the prices
-- are applied here, so a changed cost model needs no compaction.
with class_price as (
    select storage_class, price_per_hour, currency
    from (
        select r.storage_class, c.price_per_hour, c.currency,
               row_number() over (partition by r.storage_class order by c.specificity desc) as pick
        from (select distinct storage_class from run_usage) r
        join cost_model c on c.scope = 'storage_class' and r.storage_class like c.like_pattern escape '\'
    )
    where pick = 1
),
cluster_price as (
    select max(price_per_hour) as price_per_hour, any_value(currency) as currency
    from cost_model where scope = 'cluster'
),
per_class as (
    select r.*, p.price_per_hour as class_price_per_hour, p.currency
    from run_usage r
    left join class_price p using (storage_class)
)
select
    pc.campaign, pc.run,
    count(*) as n_storage_classes,
    sum(pc.n_results)::bigint as n_results,
    min(pc.started_at) as started_at,
    max(pc.ended_at) as ended_at,
    (epoch_us(max(pc.ended_at)) - epoch_us(min(pc.started_at))) / 1e6 as wall_seconds,
    sum(pc.fio_seconds) as fio_seconds,
    sum(pc.cpu_seconds) as cpu_seconds,
    sum(pc.cpu_seconds) / nullif(sum(pc.n_results), 0) as cpu_seconds_per_result,
    any_value(cp.price_per_hour) as cluster_price_per_hour,
    (epoch_us(max(pc.ended_at)) - epoch_us(min(pc.started_at))) / 1e6 / 3600 * any_value(cp.price_per_hour) as cluster_cost,
    sum(pc.fio_seconds / 3600 * pc.class_price_per_hour) as storage_cost,
    -- no prices declared, or no timings at all (imported results): no cost, rather than a cost of 0
    case when (any_value(cp.price_per_hour) is not null or bool_or(pc.class_price_per_hour is not null))
              and (max(pc.ended_at) is not null or sum(pc.fio_seconds) is not null) then
        coalesce((epoch_us(max(pc.ended_at)) - epoch_us(min(pc.started_at))) / 1e6 / 3600 * any_value(cp.price_per_hour), 0)
        + coalesce(sum(pc.fio_seconds / 3600 * pc.class_price_per_hour), 0)
    end as total_cost,
    coalesce(any_value(cp.currency), any_value(pc.currency)) as currency,
    (any_value(cp.price_per_hour) is not null or bool_or(pc.class_price_per_hour is not null)) as has_cost_model
from per_class pc
cross join cluster_price cp
group by all
order by pc.campaign, min(pc.started_at), pc.run
