"""The cast: personas, their sprites, and the scenes they play.

- `personas.py`  characters that answer under their own name: who a message calls, the
                 personas and who posted what, in the database
- `webhook_store.py` the webhook the bot created in each channel, shared by its processes
- `names.py`     what every name and word of the cast must be: Discord's rules, visible, and
                 not another's name in look-alike letters
- `speakers.py`  who said each line the model reads, told apart by a handle (`@bob (alice)`)
                 when two speakers' names look alike
- `sprites.py`   a persona's labelled alternate avatars: checked, stored, told to its model
- `scenes.py`    `/scene`: a scripted exchange of 2-3 personas, checked, and what each persona
                 is told before its line
"""

from tomori.cast.personas import Persona, PersonaStore
from tomori.cast.scenes import Scene
from tomori.cast.sprites import Sprite
from tomori.cast.webhook_store import WebhookStore

__all__ = ["Persona", "PersonaStore", "Scene", "Sprite", "WebhookStore"]
