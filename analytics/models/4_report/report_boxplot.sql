-- report_boxplot: the five numbers of the thesis's box plots (whiskers min/max, box Q1–Q3, median).
select
    campaign, storage_class, profile, workload, workload_title, direction, metric, unit,
    n, min, q1, median, q3, max, mean
from summary
where is_headline
order by campaign, profile, workload, direction, storage_class
