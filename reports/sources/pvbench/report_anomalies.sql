select * from read_parquet('data/report_anomalies.parquet')
