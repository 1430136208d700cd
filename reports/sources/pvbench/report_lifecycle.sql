select * from read_parquet('data/report_lifecycle.parquet')
