package sub // todo lowercase
