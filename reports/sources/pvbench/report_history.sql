select * from read_parquet('data/report_history.parquet')
