"""mpnpu/runtime"""
