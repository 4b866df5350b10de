"""mpnpu/harness"""
