"""mpnpu.report.text"""
