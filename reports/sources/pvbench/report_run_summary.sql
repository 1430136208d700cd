select * from read_parquet('data/report_run_summary.parquet')
