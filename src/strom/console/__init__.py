"""The web console (``strom console``): a page served by strom, with nothing to build at
install time (its HTML, script and style ship in ``assets/``), over the REST proxy's API and a
few views of its own (``api``): the cluster's brokers and partitions' health, topics with their
partitions, offsets and settings, records browsed by partition and offset, consumer groups with
their lag. It is a client of strom like the proxy it is built on."""
