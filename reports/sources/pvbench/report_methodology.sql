select * from read_parquet('data/report_methodology.parquet')
