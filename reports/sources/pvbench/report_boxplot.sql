select * from read_parquet('data/report_boxplot.parquet')
