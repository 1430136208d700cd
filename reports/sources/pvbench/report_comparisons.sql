select * from read_parquet('data/report_comparisons.parquet')
