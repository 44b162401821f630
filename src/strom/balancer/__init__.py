"""Self-balancing: a pure core that turns a model of the cluster (brokers, racks, capacities,
partitions and their load) into a plan of replica and leader moves, goal by goal as Cruise
Control's defaults. No I/O: the CLI (``strom balance``) and the controller feed it and carry
the plan out as partition reassignments."""

from strom.balancer.model import (
    BalanceError,
    BrokerModel,
    ClusterModel,
    PartitionModel,
)
from strom.balancer.optimizer import GOALS, Move, Plan, plan_balance

__all__ = [
    "GOALS",
    "BalanceError",
    "BrokerModel",
    "ClusterModel",
    "Move",
    "PartitionModel",
    "Plan",
    "plan_balance",
]
