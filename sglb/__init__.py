"""sglb"""
