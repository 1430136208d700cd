select * from read_parquet('data/report_scaling.parquet')
