"""reccl"""
