select * from read_parquet('data/report_latency_heatmap.parquet')
