select * from read_parquet('data/report_unsteady_cells.parquet')
