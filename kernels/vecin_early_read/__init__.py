"""Scale by two through VECIN / VECOUT queues: the vector read of VECIN is ordered after MTE2 by the queue."""
