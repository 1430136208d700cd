"""The few Kubernetes API reads pvbench makes from inside the cluster (stdlib only, no client library).

``api``: an in-cluster client (the pod's ServiceAccount token). ``lifecycle``: when a cell's
volume and pod became usable, read from the objects Kubernetes keeps about them.
"""
