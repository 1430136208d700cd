select * from read_parquet('data/report_change_points.parquet')
