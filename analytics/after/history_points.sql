-- history_points: the points of each history series (pvbench.stats.history.SERIES_KEY: storage
-- class × profile × workload × direction × headline metric), each occasion once (a campaign
-- aggregated alone and with others holds its occasions twice: the copy with the most repetitions),
-- numbered in the order they ran: by start (not recorded: last), campaign, run, occasion.
-- {source} is occasion_history's rows: this campaign's with the store's other campaigns' stored
-- ones (pvbench aggregate), or the stored ones only (pvbench history). {series_key} is filled in
-- from SERIES_KEY; series_id numbers the series in their key's order, for this query's result only.
with points as (
    select *
    from {source}
    qualify row_number() over (partition by {series_key}, campaign, run, occasion order by n desc) = 1
)
select
    *,
    dense_rank() over (order by {series_key}) as series_id,
    row_number() over (
        partition by {series_key} order by occasion_started_at nulls last, campaign, run, occasion
    ) as occasion_index
from points
