select * from read_parquet('data/report_storage_classes.parquet')
