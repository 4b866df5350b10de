"""mpnpu.directed"""
