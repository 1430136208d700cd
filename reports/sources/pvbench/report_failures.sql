select * from read_parquet('data/report_failures.parquet')
