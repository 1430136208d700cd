select * from read_parquet('data/report_flagged_cells.parquet')
