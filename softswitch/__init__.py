"""softswitch"""
