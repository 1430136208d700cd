select * from read_parquet('data/report_occasion_boxplot.parquet')
