-- report_fsync: VSHN's fsync series — write IOPS / bandwidth against fsync frequency, mean ± sd.
select
    campaign, storage_class,
    case when workload like 'write-iops-%' then 'iops' else 'bw' end as kind,
    metric, unit,
    replace("load", 'fsync-', '') as fsync_label,
    case replace("load", 'fsync-', '') when 'none' then 0 when '1' then 1 when '32' then 2 else 3 end as fsync_order,
    n, mean, sd,
    mean - coalesce(sd, 0) as low,
    mean + coalesce(sd, 0) as high
from summary
where profile = 'vshn' and "load" like 'fsync-%' and is_headline
order by campaign, kind, storage_class, fsync_order
