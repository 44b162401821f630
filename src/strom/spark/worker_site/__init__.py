"""A directory for the front of Spark's Python workers' PYTHONPATH (``strom.spark.session``
puts it there): its ``sitecustomize`` runs first in every worker."""
