select * from read_parquet('data/report_cost.parquet')
