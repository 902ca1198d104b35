"""syncmesh"""
