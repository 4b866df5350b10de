"""mpnpu.operators"""
