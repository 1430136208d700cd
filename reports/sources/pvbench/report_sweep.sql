select * from read_parquet('data/report_sweep.parquet')
