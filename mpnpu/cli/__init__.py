"""mpnpu/cli"""
