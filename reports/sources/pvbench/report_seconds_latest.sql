select * from read_parquet('data/report_seconds_latest.parquet')
