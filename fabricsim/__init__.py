"""fabricsim"""
