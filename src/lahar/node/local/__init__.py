"""Running pods as real local processes: the pieces `lahar node local` is built from.

So far: the pod network (a bridge, one network namespace per pod, outbound NAT).
"""
