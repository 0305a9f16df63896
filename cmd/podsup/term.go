package main

import "golang.org/x/sys/unix"

func unixIoctlTermios(fd int) (*unix.Termios, error) { return unix.IoctlGetTermios(fd, unix.TCGETS) }
