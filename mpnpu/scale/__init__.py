"""mpnpu.scale"""
