select * from read_parquet('data/report_guards.parquet')
