"""(map written with the renames that follow the move)"""
