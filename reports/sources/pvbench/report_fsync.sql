select * from read_parquet('data/report_fsync.parquet')
