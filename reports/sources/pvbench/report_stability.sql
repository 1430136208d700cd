select * from read_parquet('data/report_stability.parquet')
