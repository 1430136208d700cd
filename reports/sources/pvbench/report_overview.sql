select * from read_parquet('data/report_overview.parquet')
