select * from read_parquet('data/report_runs.parquet')
