/// Reads over HTTP (`daybook serve`): the routes, access, routing to the member that holds a
/// user, and the JSON of each answer. Filled in by the serve work of issue 28.
public enum ReadService {}
