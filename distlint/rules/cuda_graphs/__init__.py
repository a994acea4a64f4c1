"""DL6xx: CUDA graph capture and cudagraph trees."""
