"""mpnpu.report"""
