select * from read_parquet('data/report_occasions.parquet')
